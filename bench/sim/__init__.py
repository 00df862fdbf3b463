"""The session simulator behind ``bench/fidelity.py``: does the gate pay for itself?

``workload`` writes seeded session scripts, ``summarizer`` is the lossy
summarizer, ``arms`` puts a runtime on tierlog or on the same journal ungated,
``runtime`` is the runtime's policy and what it measures, ``obligations`` the one
judge, ``sweep`` the grid and its JSON, ``chart`` the SVG.
"""
