"""Storage: value codec, record schema, the `Store` and its local and fsspec implementations, leases."""
