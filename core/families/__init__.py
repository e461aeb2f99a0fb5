"""Hugging Face model families, one module each; core.families.registry maps model_type to them."""
