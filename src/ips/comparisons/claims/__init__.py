"""The paper's claims tested on the configured models (`table.claims`)."""
