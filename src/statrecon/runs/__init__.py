"""Orchestration over many units: parallel pools, resumable stores, census and claims runs."""
