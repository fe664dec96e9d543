"""The controller of the T9k job kinds: runtime/ (the generic controller), jobs/ (the engine), kinds/ (GenericJob,
TensorFlowTrainingJob), devtools/ (`local`), cmd/ (the command line). ARCHITECTURE.md draws the layers."""
