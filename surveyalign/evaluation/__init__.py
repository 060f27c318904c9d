"""surveyalign.evaluation"""
