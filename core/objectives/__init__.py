"""Training objectives, one module each: what a batch becomes and which loss the trainer minimises.

`masked_lm`: BERT's recipe for encoders. `load_balance`: the router's auxiliary loss for a mixture of
experts (Switch Transformer, as Mixtral trains it).
"""
