"""The MiniLM sentence encoder: model files, length buckets, sequence packing, encode (C1.1)."""
