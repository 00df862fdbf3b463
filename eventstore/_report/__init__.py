"""The HTML report: a timeline model of one session and the self-contained page that draws it."""
