"""Mutation testing of the engine's decision modules (`make mutants`); see runner.py."""
