"""Presenter mode: scripted stories (data files) played on a stage for sales demos."""
