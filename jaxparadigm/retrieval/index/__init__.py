"""Index folders: format, reader, writer, build, owned files, IVF lists, searcher, process group (C1.1)."""
