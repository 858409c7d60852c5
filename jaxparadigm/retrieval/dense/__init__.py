"""Dense search engines: exact blocked top-k, k-means, the inverted-file scan (C1.1)."""
