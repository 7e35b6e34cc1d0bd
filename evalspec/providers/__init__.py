"""Systems under test and models: python, http and model providers, the judge's transport,
context strategies, the response cache, limits, tool rounds."""
