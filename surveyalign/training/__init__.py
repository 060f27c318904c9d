"""surveyalign.training"""
