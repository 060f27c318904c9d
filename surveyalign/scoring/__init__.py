"""surveyalign.scoring"""
