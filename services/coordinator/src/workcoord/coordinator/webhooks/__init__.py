"""Outbound webhooks: Standard Webhooks signing (:mod:`.signing`), the STANDARD and SLACK
bodies (:mod:`.payloads`), the SSRF rules and the one HTTP call of a delivery
(:mod:`.outbound`), and when a failed delivery is tried again (:mod:`.schedule`)."""
