"""Across models (step 6): the factor comparisons, tau robustness and the paper's
claims."""
