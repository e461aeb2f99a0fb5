"""Sparse autoencoders, transcoders and a tuned lens: trained on the lab's own models, read and steered exactly."""
