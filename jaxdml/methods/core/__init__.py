"""The ground floor of the method layer: the method record and the one settings table, the engine that runs a
record, the gradient plan, the estimator bases, the tuple door, and the kernel and neighbourhood helpers that
several families use. No module here imports a family."""
