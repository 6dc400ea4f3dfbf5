"""CES (Customer Engagement Suite) evaluations as data: the resource model, reading CES files, the lossless
mapping to and from ADK eval cases, and what a pulled case says about its CES results."""
