"""Deep-metric-learning losses, miners, reducers and samplers."""
