"""Process entry points: the `diagbot` console script, which launches the delivery channels (Slack, terminal).

Kept outside core/ because `diagbot serve` starts the Slack adapter, and core/ never depends on bot/.
"""
