"""opdoctor: tells you why your custom operator is "not registered", and what to do about it."""

__version__ = "0.1.0"
