"""`tuner report`: one self-contained HTML file of a study (docs/report.md)."""
