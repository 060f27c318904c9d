"""surveyalign.inference"""
