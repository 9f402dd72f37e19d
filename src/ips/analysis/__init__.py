"""What `ips metrics` computes for one (model, dataset) (step 5): IPS and its bands,
interaction types, diagnostics, nulls, bootstrap intervals and tests, the case study."""
