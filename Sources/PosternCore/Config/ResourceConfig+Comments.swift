extension ResourceConfig {
    /// The shipped `comments` resource (docs/api.md, Resources): the demo's comments on posts, listed per post
    /// with `?post=<id>`, written by any signed-in user, changed or deleted only by their author.
    static var comments: ResourceConfig {
        var comments = ResourceConfig(name: "comments", collection: "comments",
                                      fields: [("id", "id"), ("post", "post"), ("text", "body"), ("user", "user_created"),
                                               ("date_created", "date_created")])
        comments.required = ["text"]
        comments.writable = ["post", "text"]
        comments.owner = "user_created"
        comments.searchFields = ["text"]
        comments.filters = [FilterConfig(name: "post", field: "post", op: .eq, type: .integer)]
        return comments
    }
}
