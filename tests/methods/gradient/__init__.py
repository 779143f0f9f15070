"""Gradient-trained methods (NCA, LMNN and its active set, KLMNN, NCM, MLKR, MCML, LDML)."""
