"""RET (Retrograde Evidence Triangulation): the technique, its evaluation gates and its multiple-choice study."""
