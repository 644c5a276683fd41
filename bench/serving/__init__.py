"""Speed of one smserve server over HTTP, against the in-process floor."""
