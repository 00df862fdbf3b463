"""The HTML report: timeline model, page, browser."""
