"""Methods solved in closed form (eigen problems) and their kernel forms: PCA, LDA, Covariance, LFDA, LLDA /
KLLDA, ANMM / KANMM, DMLMJ / KDMLMJ and KDA."""
