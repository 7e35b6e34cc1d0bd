"""`evalspec view` (docs/en/review.md): a local web app over a project's runs where a person reviews them.

    runs     which run.json files are served, by run id (read once per change of the file)
    actions  the review actions, each written to a file the command line also reads
    approve  `draft: true` taken out of a suite file, every other byte kept
    pages    the HTML: the run list with its trend, a run's report with the review panel, a diff
    server   the aiohttp app: the token, the Host check, the routes

Imported only by the `view` command, so other commands never load the HTTP server.
"""
