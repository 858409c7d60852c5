"""Index folders: format, reader, writer, build, owned files, IVF lists, searchers (C1.1)."""
