"""Index versions in PostgreSQL: tables, their companions (postings, lexicon, cross-references,
citations), who may read them, revocation, retention and the live pointer."""
