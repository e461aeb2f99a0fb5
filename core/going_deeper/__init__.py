"""Going deeper, measured: stretching a model's context after training, and the 2017 block updated part by part.

recipe.py holds the one recipe every model here trains by (the ladder's rungs, the context models and the
interpolation fine-tune); trainer.py trains them; extrapolation.py scores a model at input lengths past the one
it was trained at; ladder.py reads and summarises the ladder's record; stretching.py makes the Stretching view's
figures. Nothing here imports Qt.
"""
