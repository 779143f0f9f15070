"""Methods trained by gradient descent on a pure loss through the one plan: NCA, LMNN (and its kernel form
KLMNN), the nearest-class-mean learners (NCMML, NCMC), MLKR, MCML and LDML."""
