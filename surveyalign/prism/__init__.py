"""surveyalign.prism"""
