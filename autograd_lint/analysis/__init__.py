"""The shared model the rules read: module index, Function class models, project facts."""
