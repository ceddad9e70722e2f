"""Loading graphs: bundle records and readers."""
