"""Weak supervision: learners from pairs, triplets, quadruplets and chunklets (ITML, LSI, MMC, SDML, GMML,
LSML, SCML, DML-eig, RCA), the pair helpers, the constraint generators and metric-learn's ``*_Supervised``
names."""
