"""Default roots of the services survey texts come from (SurveyReview §4, App. A), in a module without heavy
imports so the ``data fetch-texts`` parser can show them.
"""

#: Europe PMC REST root (F1000Research and PeerJ metadata and JATS XML).
EUROPEPMC_URL = "https://www.ebi.ac.uk/europepmc/webservices/rest"
#: OpenReview API 2 root.
OPENREVIEW_URL = "https://api2.openreview.net"
#: API 1 still serves the venues that were not moved to API 2 (older conferences).
OPENREVIEW_V1_URL = "https://api.openreview.net"
