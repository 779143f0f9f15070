"""Other projects' test suites and APIs run against jaxdml (scikit-learn's NCA, metric-learn, pyDML)."""
