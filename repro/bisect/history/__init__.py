"""Bisection along a history: the commit or the release where an engine's state changes.

commits: bisect_commits(CommitCampaign)    each commit built in a worktree of its own
versions: bisect_versions(VersionCampaign) each release built from the registry
posterior.py                               where the change is, and what to measure next
search.py                                  endpoints first, then point after point
environments.py | git_range.py | releases.py   builds, commits, releases
point_oracle.py | reference.py             the engine at a point; answers against good's
"""
