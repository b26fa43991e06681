"""Getting text in: the SWORD modules and files a source names, read as they are, with what
changed since the last run."""
