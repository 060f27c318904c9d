"""surveyalign.data"""
