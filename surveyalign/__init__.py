"""surveyalign: train and evaluate LLM judges of survey papers against human reviewers.

See README.md for the map of sub-packages (data, prompts, backends, evaluation, scoring,
training, knowledge, inference, autoraters, prism).
"""

__version__ = "0.1.0"
