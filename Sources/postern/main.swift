import PosternCore
print("postern")
