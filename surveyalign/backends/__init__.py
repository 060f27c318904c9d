"""surveyalign.backends"""
