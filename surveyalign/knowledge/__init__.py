"""surveyalign.knowledge"""
