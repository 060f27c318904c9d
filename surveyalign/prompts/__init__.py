"""surveyalign.prompts"""
