"""GenericJob (batch.tensorstack.dev/v1beta1): its models, CRD, validation, success and failure
rules, variable substitution, and its status layout."""
