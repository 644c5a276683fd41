"""smserve side by side with its peers (MLServer, the AWS container) and the nginx floor."""
