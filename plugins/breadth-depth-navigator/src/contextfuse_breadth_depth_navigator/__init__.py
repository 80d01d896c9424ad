"""contextfuse-breadth-depth-navigator: personalized PageRank from the request's seeds."""

from contextfuse_breadth_depth_navigator.strategy import BreadthDepthNavigator

__all__ = ["BreadthDepthNavigator"]
