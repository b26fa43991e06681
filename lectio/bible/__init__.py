"""The Bible's shape: books, references as people type them, verse ids and counts, pericopes."""
