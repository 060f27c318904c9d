"""surveyalign.paper: SurveyReview end to end as the paper ran it, one command (``surveyalign paper``).

data build -> KA build (Comp-KA, Crit-KA) -> SFT x 4 (and the variants of Tables 3 / 4) -> DPO pairs -> DPO
(Criticalness) -> evaluate SurveyAlign (K-sample vote, consolidated rationale) and the baselines, with one RQS
judge -> HAS -> Tables 2, 3, 4, 7 and 8 (markdown, JSON, one HTML page), in one run folder. A stage whose inputs
and settings did not change is skipped. Profiles: ``configs/paper/{paper,qlora,tiny}.yaml``.
"""

from surveyalign.paper._config import STAGES, PaperConfig, Variant, paper_variants
from surveyalign.paper._run import plan_paper, run_paper
from surveyalign.paper._stages import StageFailed

__all__ = ["STAGES", "PaperConfig", "StageFailed", "Variant", "paper_variants",
           "plan_paper", "run_paper"]
