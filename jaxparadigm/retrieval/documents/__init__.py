"""A user's files as documents: walking folders, file kinds, readable text, passages (C1.1)."""
