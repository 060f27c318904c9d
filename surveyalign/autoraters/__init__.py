"""surveyalign.autoraters"""
